# ruff: noqa: E501
"""The redaction case table shared by the unit tests and the end-to-end test: >= 40 secret forms
(cloud, VCS, chat, payment, package-registry and AI-provider tokens, URL credentials, key/value
credentials in env, JSON, YAML and headers, PEM blocks terminated or not) with the exact text each
must become, and ordinary text that must stay as written.

Token values are generated from a hash (deterministic, high entropy like real ones) so that no real
credential shape is committed literally. ``expected`` is a format string: ``{<label>}`` stands for
``[REDACTED:secret:<label>]``.
"""

from __future__ import annotations

import base64
import hashlib
import re
import string
from typing import Final


def tok(n: int, seed: str, alphabet: str = string.ascii_letters + string.digits) -> str:
    """``n`` characters of ``alphabet``, pseudo-random from ``seed``."""
    out: list[str] = []
    i = 0
    while len(out) < n:
        out.extend(
            alphabet[b % len(alphabet)] for b in hashlib.sha256(f"{seed}:{i}".encode()).digest()
        )
        i += 1
    return "".join(out[:n])


LOW: Final = string.ascii_lowercase + string.digits
HEX: Final = "0123456789abcdef"
UPPER_DIGITS: Final = string.ascii_uppercase + string.digits
DISCORD_ID: Final = tok(18, "dw1", string.digits)


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


#: The configuration-file forms (issue 32): a Docker auth (base64 of user:password), a kubeconfig
#: client key (base64 of a PEM private key), and what each must not be confused with.
DOCKER_AUTH: Final = b64(f"deploy:{tok(24, 'dka')}")
KUBE_KEY: Final = b64(
    f"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA{tok(64, 'kk1')}\n"
    f"{tok(64, 'kk2')}\n-----END RSA PRIVATE KEY-----\n"
)
KUBE_CERT: Final = b64(
    f"-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIE{tok(44, 'kc1')}\n-----END CERTIFICATE-----\n"
)

#: (name, raw text, expected format string).
POSITIVE: Final[tuple[tuple[str, str, str], ...]] = (
    # cloud
    ("aws key id", f"id AKIA{tok(16, 'aws', string.ascii_uppercase + '234567')} ok", "id {aws} ok"),
    (
        "aws secret env",
        f"AWS_SECRET_ACCESS_KEY={tok(40, 'awss')}",
        "AWS_SECRET_ACCESS_KEY={credential}",
    ),
    (
        "aws secret ini",
        f"aws_secret_access_key = {tok(30, 'awsi')}/{tok(9, 'awsj')}",
        "aws_secret_access_key = {credential}",
    ),
    (
        "aws secret json camel",
        f'{{"SecretAccessKey": "{tok(40, "awsc")}"}}',
        '{{"SecretAccessKey": "{credential}"}}',
    ),
    ("gcp api key", f"key=AIza{tok(35, 'gcp')} end", "key={gcp} end"),
    (
        "google api key in url",
        f"https://maps.googleapis.com/maps/api/js?key=AIza{tok(35, 'gmap')}&v=3",
        "https://maps.googleapis.com/maps/api/js?key={gcp}&v=3",
    ),
    (
        "azure storage",
        f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={tok(86, 'az')}==;EndpointSuffix=core.windows.net",
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={azure};EndpointSuffix=core.windows.net",
    ),
    ("digitalocean", f"dop_v1_{tok(64, 'do', HEX)}", "{digitalocean}"),
    # vcs
    ("github classic", f"tok ghp_{tok(36, 'ghp')} x", "tok {github} x"),
    ("github fine-grained", f"github_pat_{tok(22, 'fg1')}_{tok(59, 'fg2')}", "{github}"),
    ("github oauth", f"gho_{tok(36, 'gho')}", "{github}"),
    ("github app", f"ghs_{tok(36, 'ghs')}", "{github}"),
    ("gitlab pat", f"glpat-{tok(20, 'gl')}", "{gitlab}"),
    (
        "bitbucket/ssh? git url creds",
        f"git clone https://oauth2:{tok(20, 'glo')}@gitlab.com/g/p.git",
        "git clone https://oauth2:{url}@gitlab.com/g/p.git",
    ),
    # chat
    (
        "slack bot",
        f"xoxb-{tok(11, 'sb1', '0123456789')}-{tok(13, 'sb2', '0123456789')}-{tok(24, 'sb3')}",
        "{slack}",
    ),
    (
        "slack user",
        f"xoxp-{tok(11, 'su1', '0123456789')}-{tok(11, 'su2', '0123456789')}-{tok(12, 'su3', '0123456789')}-{tok(32, 'su4', HEX)}",
        "{slack}",
    ),
    (
        "slack app",
        f"xapp-1-A{tok(10, 'sa1', UPPER_DIGITS)}-{tok(13, 'sa2', '0123456789')}-{tok(64, 'sa3', HEX)}",
        "{slack}",
    ),
    (
        "slack webhook",
        f"post to https://hooks.slack.com/services/T{tok(8, 'sw1', UPPER_DIGITS)}/B{tok(8, 'sw2', UPPER_DIGITS)}/{tok(24, 'sw3')} now",
        "post to {slack} now",
    ),
    (
        "discord webhook",
        f"https://discord.com/api/webhooks/{DISCORD_ID}/{tok(68, 'dw2')}",
        "https://discord.com/api/webhooks/" + DISCORD_ID + "/{discord}",
    ),
    (
        "telegram bot",
        f"TELEGRAM_BOT_TOKEN={tok(10, 'tg1', '0123456789')}:AA{tok(33, 'tg2')}",
        "TELEGRAM_BOT_TOKEN={telegram}",
    ),
    # payment
    ("stripe live", f"sk_live_{tok(24, 'st1')}", "{stripe}"),
    ("stripe test restricted", f"rk_test_{tok(24, 'st2')}", "{stripe}"),
    ("square", f"EAAA{tok(60, 'sq')}", "{square}"),
    # registries
    ("npm token", f"npm_{tok(36, 'npm', LOW)}", "{npm}"),
    (
        "npmrc",
        f"//registry.npmjs.org/:_authToken={tok(8, 'n1', HEX)}-{tok(4, 'n2', HEX)}-{tok(4, 'n3', HEX)}-{tok(4, 'n4', HEX)}-{tok(12, 'n5', HEX)}",
        "//registry.npmjs.org/:_authToken={credential}",
    ),
    ("pypi", f"pypi-AgEIcHlwaS5vcmc{tok(70, 'pypi')}", "{pypi}"),
    ("docker hub pat", f"dckr_pat_{tok(27, 'dck')}", "{docker}"),
    # ai providers
    ("openai project", f"sk-proj-{tok(74, 'oa1')}T3BlbkFJ{tok(74, 'oa2')}", "{key}"),
    ("anthropic", f"sk-ant-api03-{tok(93, 'an')}AA", "{key}"),
    ("deepseek", f"sk-{tok(32, 'ds', HEX)}", "{key}"),
    ("huggingface", f"hf_{tok(34, 'hf', string.ascii_letters)}", "{huggingface}"),
    ("groq", f"gsk_{tok(52, 'groq')}", "{groq}"),
    # url creds
    (
        "postgres url",
        f"postgresql://app:{tok(12, 'pg')}@db.internal:5432/app",
        "postgresql://app:{url}@db.internal:5432/app",
    ),
    (
        "https url",
        f"https://deploy:{tok(10, 'hu')}@example.com/repo.git",
        "https://deploy:{url}@example.com/repo.git",
    ),
    ("redis url no user", f"redis://:{tok(16, 'rd')}@cache:6379/0", "redis://:{url}@cache:6379/0"),
    (
        "mongodb srv",
        f"mongodb+srv://admin:{tok(14, 'mg')}@cluster0.abcde.mongodb.net/db",
        "mongodb+srv://admin:{url}@cluster0.abcde.mongodb.net/db",
    ),
    # key/value
    (
        "json password",
        f'{{"user": "bob", "password": "{tok(10, "jp")}"}}',
        '{{"user": "bob", "password": "{credential}"}}',
    ),
    ("json api_key", f'{{"api_key":"{tok(24, "jk")}"}}', '{{"api_key":"{credential}"}}'),
    (
        "yaml password",
        f"db:\n  password: {tok(12, 'yp')}\n  host: x",
        "db:\n  password: {credential}\n  host: x",
    ),
    ("env *_PASSWORD", f"POSTGRES_PASSWORD={tok(12, 'ep')}", "POSTGRES_PASSWORD={credential}"),
    ("env *_PWD", f"MYSQL_ROOT_PWD={tok(10, 'ew')}", "MYSQL_ROOT_PWD={credential}"),
    (
        "env key after underscore",
        f"export OPENAI_API_KEY={tok(20, 'ek')}",
        "export OPENAI_API_KEY={credential}",
    ),
    ("X-Api-Key header", f"X-Api-Key: {tok(32, 'xk')}", "X-Api-Key: {credential}"),
    (
        "authorization basic",
        f"Authorization: Basic {tok(20, 'ab')}=\nnext line",
        "Authorization: Basic {authorization}\nnext line",
    ),
    (
        "authorization bearer",
        f"curl -H 'Authorization: Bearer {tok(30, 'bb')}' https://api.x",
        "curl -H 'Authorization: Bearer {bearer}' https://api.x",
    ),
    (
        "cli flag",
        f"mysqldump --user=root --password={tok(14, 'cf')} app",
        "mysqldump --user=root --password={credential} app",
    ),
    (
        "yaml quoted token",
        f"github:\n  token: '{tok(18, 'yq')}'",
        "github:\n  token: '{credential}'",
    ),
    (
        "token in pip url",
        f"pip install --index-url https://__token__:{tok(24, 'pip')}@pypi.example.org/simple pkg",
        "pip install --index-url https://__token__:{url}@pypi.example.org/simple pkg",
    ),
    (
        "python kwarg",
        f'client = Client(api_key="{tok(24, "pk")}")',
        'client = Client(api_key="{credential}")',
    ),
    ("my password is", f"my password is {tok(6, 'mp')}42!", "my password is {credential}"),
    (
        "pem terminated",
        "key:\n-----BEGIN RSA PRIVATE KEY-----\n"
        + tok(64, "pem1")
        + "\n"
        + tok(40, "pem2")
        + "==\n-----END RSA PRIVATE KEY-----\ndone",
        "key:\n{pem}\ndone",
    ),
    (
        "pem unterminated",
        "-----BEGIN OPENSSH PRIVATE KEY-----\n"
        + tok(70, "pem3")
        + "\n"
        + tok(70, "pem4")
        + "\nthat is all I have",
        # No END line: where the body ends cannot be told, so the rest of the text goes too.
        "{pem}",
    ),
    ("jwt", f"token eyJ{tok(20, 'j1')}.eyJ{tok(40, 'j2')}.{tok(43, 'j3')}", "token {jwt}"),
    # more providers
    (
        "aws secret cli",
        f"aws configure set aws_secret_access_key {tok(40, 'awscli')}",
        "aws configure set aws_secret_access_key {credential}",
    ),
    (
        "gcp service account json",
        '{"type": "service_account", "private_key_id": "' + tok(40, "said", HEX) + '", '
        '"private_key": "-----BEGIN PRIVATE KEY-----\\n'
        + tok(64, "sapk")
        + '\\n-----END PRIVATE KEY-----\\n"}',
        # the generic rule takes the whole quoted value (with its trailing \\n): one marker
        '{{"type": "service_account", "private_key_id": "{gcp}", "private_key": "{pem}"}}',
    ),
    ("heroku", f"HRKU-AA{tok(58, 'hk')}", "{heroku}"),
    ("databricks", f"host=x token dapi{tok(32, 'dbx', HEX)}", "host=x token {databricks}"),
    ("vault", f"VAULT_TOKEN: hvs.{tok(90, 'vt')}", "VAULT_TOKEN: {vault}"),
    ("doppler", f"dp.pt.{tok(43, 'dp')}", "{doppler}"),
    ("age", "AGE-SECRET-KEY-1" + tok(58, "age", "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"), "{age}"),
    ("shopify", f"shpat_{tok(32, 'shp', HEX)}", "{shopify}"),
    ("stripe webhook secret", f"whsec_{tok(32, 'wh')}", "{stripe}"),
    ("sendgrid", f"SG.{tok(22, 'sg1')}.{tok(43, 'sg2')}", "{sendgrid}"),
    ("twilio api key", f"SK{tok(32, 'tw', HEX)}", "{twilio}"),
    ("mailgun", f"key-{tok(32, 'mgk', HEX)}", "{mailgun}"),
    ("linear", f"lin_api_{tok(40, 'lin')}", "{linear}"),
    ("anthropic admin", f"x-api-key: sk-ant-admin01-{tok(93, 'ana')}AA", "x-api-key: {key}"),
    ("replicate", f"r8_{tok(37, 'r8')}", "{replicate}"),
    (
        "azure sas url",
        f"https://acct.blob.core.windows.net/c/b?sv=2022-11-02&sp=r&sig={tok(43, 'sas')}%3D",
        "https://acct.blob.core.windows.net/c/b?sv=2022-11-02&sp=r&sig={azure}",
    ),
    # config lines and command lines (issue 22)
    (
        "django SECRET_KEY env",
        f"SECRET_KEY=django-insecure-{tok(10, 'dj1', LOW)}#{tok(6, 'dj2')}!{tok(8, 'dj3')}",
        "SECRET_KEY={credential}",
    ),
    (
        "DJANGO_SECRET_KEY quoted",
        f'DJANGO_SECRET_KEY="{tok(12, "dj4")}$#{tok(20, "dj5")}"',
        'DJANGO_SECRET_KEY="{credential}"',
    ),
    (
        "settings.py SECRET_KEY",
        f"SECRET_KEY = '{tok(50, 'dj6')}'\nDEBUG = True",
        "SECRET_KEY = '{credential}'\nDEBUG = True",
    ),
    (
        "sshpass quoted",
        f"sshpass -p '{tok(10, 'sp1')}&x' ssh root@10.0.0.7 uptime",
        "sshpass -p '{credential}' ssh root@10.0.0.7 uptime",
    ),
    (
        "sshpass bare before ssh",
        f"sshpass -p {tok(9, 'sp2', string.ascii_letters)} scp a.txt me@host:/tmp",
        "sshpass -p {credential} scp a.txt me@host:/tmp",
    ),
    (
        "sshpass option first",
        f"sshpass -v -p {tok(8, 'sp3')}9 rsync -a src/ host:dst/",
        "sshpass -v -p {credential} rsync -a src/ host:dst/",
    ),
    (
        "curl -u user:pass",
        f"curl -s -u admin:{tok(12, 'cu1')}! https://api.example.com/v1/items",
        "curl -s -u admin:{credential} https://api.example.com/v1/items",
    ),
    (
        "curl --user quoted",
        f'curl --user "deploy:{tok(14, "cu2")}" -X POST https://ci.example.com/hook',
        'curl --user "deploy:{credential}" -X POST https://ci.example.com/hook',
    ),
    (
        "mysql -pPASS",
        f"mysql -h db.internal -u root -p{tok(12, 'my1')} app < dump.sql",
        "mysql -h db.internal -u root -p{credential} app < dump.sql",
    ),
    (
        "mysqldump -p quoted",
        f"mysqldump -uroot -p'{tok(10, 'my2')}#1' shop > shop.sql",
        "mysqldump -uroot -p'{credential}' shop > shop.sql",
    ),
    (
        "mongodb url password with #",
        f"mongodb://admin:{tok(6, 'mh1')}#{tok(6, 'mh2')}@db.example.com:27017/app?authSource=admin",
        "mongodb://admin:{url}@db.example.com:27017/app?authSource=admin",
    ),
    (
        "mongodb url password with # and @",
        f"MONGO_URL=mongodb://app:{tok(5, 'mh3')}@#{tok(7, 'mh4')}@mongo-0.svc:27017/db",
        "MONGO_URL=mongodb://app:{url}@mongo-0.svc:27017/db",
    ),
    (
        "pem cut inside a title",
        "-----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjEAAAAA" + tok(30, "pt1"),
        "{pem}",
    ),
    (
        "pem body without its header",
        "my key b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ " + tok(40, "pt2"),
        "my key {pem}",
    ),
    (
        "rsa key body without its header",
        "it starts MIIEowIBAAKCAQEA" + tok(60, "pt3") + "\n" + tok(64, "pt4"),
        "it starts {pem}",
    ),
    ("npm token glued by _", f"key_npm_{tok(36, 'npg')}", "key_{npm}"),
    (
        "npm token in .npmrc env",
        f"NPM_TOKEN=npm_{tok(36, 'npe')} npm publish",
        "NPM_TOKEN={npm} npm publish",
    ),
    (
        "sendgrid ending in -",
        f"SENDGRID_API_KEY SG.{tok(10, 'sgd')}-_{tok(10, 'sge')}.{tok(40, 'sgf')}_z- sent",
        "SENDGRID_API_KEY {sendgrid} sent",
    ),
    ("sk key glued by _", f"key_sk-{tok(40, 'skg')}", "key_{key}"),
    ("openai key glued by _", f"OPENAI_KEY_sk-proj-{tok(48, 'skp')}", "OPENAI_KEY_{key}"),
    ("github token glued by _", f"token_ghp_{tok(36, 'ghg')}", "token_{github}"),
    # configuration files shown in a session (issue 32)
    (
        "docker config.json auth",
        f'{{"auths": {{"registry.example.com:5000": {{"auth": "{DOCKER_AUTH}"}}}}}}',
        '{{"auths": {{"registry.example.com:5000": {{"auth": "{docker}"}}}}}}',
    ),
    (
        "kubeconfig client-key-data",
        f"users:\n- name: admin\n  user:\n    client-certificate-data: {KUBE_CERT}\n"
        f"    client-key-data: {KUBE_KEY}\n",
        f"users:\n- name: admin\n  user:\n    client-certificate-data: {KUBE_CERT}\n"
        "    client-key-data: {pem}\n",
    ),
    (
        "kubeconfig json client-key-data",
        f'{{"user": {{"client-key-data": "{KUBE_KEY}"}}}}',
        '{{"user": {{"client-key-data": "{pem}"}}}}',
    ),
    (
        ".netrc on lines",
        f"machine api.example.com\n  login deploy\n  password {tok(20, 'nr1')}\nmachine b",
        "machine api.example.com\n  login deploy\n  password {credential}\nmachine b",
    ),
    (
        ".netrc on one line, password first",
        f"default password {tok(18, 'nr2')} login anonymous",
        "default password {credential} login anonymous",
    ),
    (
        ".netrc quoted",
        f'machine pypi.org login __token__ password "{tok(12, "nr3")} {tok(6, "nr4")}"',
        'machine pypi.org login __token__ password "{credential}"',
    ),
)

#: The cases whose key has no END line: redacted to the end of their text, so a text joining several
#: cases holds at most one of them, last.
TO_END_OF_TEXT: Final = frozenset({
    "pem unterminated", "pem cut inside a title", "pem body without its header",
    "rsa key body without its header",
})  # fmt: skip

#: Ordinary text that must come out byte for byte as it went in.
NEGATIVE: Final[tuple[str, ...]] = (
    "commit 3f2a9c1d7e4b8a6f0c5d2e9b1a7f3c8d4e6b2a90 fixed it",
    "request id 123e4567-e89b-42d3-a456-426614174000 failed",
    "Click the password reset link and choose a new password.",
    "see https://docs.python.org/3/library/re.html#re.sub for details",
    "clone git@github.com:owner/repo.git then ssh://git@host:22/x",
    "the token count was 4096 and max_tokens: 8192 was set",
    "def tokenize(text): return text.split()  # tokenizer",
    "rename getSecretManagerClient to secretsManagerClientFactory",
    "open /home/dev/project/src/secret_store/keys.py and /etc/ssl/certs",
    "PWD=/home/dev/project OLDPWD=/tmp",
    "password: ${DB_PASSWORD} and token: <your-token-here>",
    "api_key = os.environ['OPENAI_API_KEY']",
    "base64 of hello is aGVsbG8gd29ybGQ= and sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "the secret sauce is patience; a secret of success",
    "Bearer tokens expire; use the bearer scheme",
    "QmFzZTY0RW5jb2RlZElkZW50aWZpZXI is a code identifier: getUserAuthenticationTokenFromCache",
    "password_reset_url: https://example.com/reset",
    "token_url = https://oauth2.googleapis.com/token",
    "the build took 12.5s (sk-short, ghp_x, xoxb-1)",
    "My password manager is great.",
    "use the existing [REDACTED:secret:key] marker",
    "POSTGRES_PASSWORD_FILE=/run/secrets/db_password",
    "self.api_key = api_key",
    "token = _FILE_VALUES.set(values)",
    "lease_token=ctx.lease.token, pending_tokens=tokens)",
    "CHARS_PER_TOKEN: Final = 4",
    "hand them to the final pass: they work on a whole project",
    "export DEEPSEEK_API_KEY=sk-...",
    "use the task-scheduler and the desk-sharing app",
    "bypass the cache; compass: north; the desk key-value store",
    "the passage ended, spam filter off",
    # look-alikes of the config-line and command-line forms (issue 22)
    "SECRET_KEY_LENGTH=32 and SECRET_KEY_FILE=/run/secrets/django_key",
    "SECRET_KEY = os.environ['DJANGO_SECRET_KEY']",
    "mysql -u root -p app_db  (it asks for the password)",
    "mysql -h 127.0.0.1 -P 3306 -u root -p",
    "curl -u user https://api.example.com and curl -u user: https://x",
    "mongodb://db1.example.com:27017,db2.example.com:27017/app?replicaSet=rs0",
    "mongodb://admin@db.example.com:27017/app#notes",
    "npm_config_cache=/tmp/npm-cache npm ci; npm_lifecycle_event is set",
    "use sshpass -p only in scripts; the sshpass -p flag is insecure",
    "the SG. Hoffmann & Co. paper; SG.1 and SG.2 are sections",
    "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAu1SU1LfVLPHCozMxH2Mo\n-----END PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJ\n-----END CERTIFICATE-----",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl dev@host",
    "mkdir -p build && docker run -u 1000:1000 img",
    # look-alikes of the configuration-file forms (issue 32)
    '{"auth": "oauth2", "retries": 3} and {"auth": "' + b64("username") + '"}',
    '"credsStore": "desktop", "auths": {"ghcr.io": {}}',
    "client-key-data: DATA+OMITTED and client-certificate-data: " + KUBE_CERT,
    "set client-key-data to the base64 of the key file",
    "the machine learning login page has a password field",
    "machine build-01 is down; login with your password as usual",
)


MARKER: Final = re.compile(r"\[REDACTED:secret:[a-z0-9]+\]")


class _Labels(dict[str, str]):
    def __missing__(self, label: str) -> str:
        return f"[REDACTED:secret:{label}]"


def expected(template: str) -> str:
    """The exact text a case must become."""
    return template.format_map(_Labels())


def secrets_of(raw: str, template: str) -> list[str]:
    """The parts of ``raw`` that the markers of ``expected(template)`` replace."""
    pieces = MARKER.split(expected(template))
    pattern = "(.+?)".join(re.escape(p) for p in pieces)
    match = re.fullmatch(pattern, raw, re.DOTALL)
    assert match is not None, (raw, template)
    return list(match.groups())
