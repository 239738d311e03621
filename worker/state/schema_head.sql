-- state database schema at alembic revision last_message_1
-- written by `python -m dsh_memory_worker.worker.state.write_template`; do not edit
CREATE TABLE alembic_version (
	version_num VARCHAR(32) NOT NULL, 
	CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num)
);
CREATE TABLE sessions (
	session_id VARCHAR(200) NOT NULL, 
	path TEXT NOT NULL, 
	generation INTEGER DEFAULT 0 NOT NULL, 
	project TEXT DEFAULT '' NOT NULL, 
	header JSON NOT NULL, 
	inherited_cut BIGINT DEFAULT 0 NOT NULL, 
	scan_offset BIGINT DEFAULT 0 NOT NULL, 
	scan_seq BIGINT DEFAULT 0 NOT NULL, 
	checkpoints JSON NOT NULL, 
	durable_end_seq BIGINT DEFAULT 0 NOT NULL, 
	last_turn_end_seq BIGINT, 
	last_title_seq BIGINT, 
	title_text TEXT, 
	last_activity_at DATETIME, 
	closed_at DATETIME, 
	forgotten BOOLEAN DEFAULT false NOT NULL, 
	created_at DATETIME NOT NULL, 
	updated_at DATETIME NOT NULL, last_message_at DATETIME, 
	CONSTRAINT pk_sessions PRIMARY KEY (session_id)
);
CREATE TABLE progress (
	shelf VARCHAR(200) NOT NULL, 
	session_id VARCHAR(200) NOT NULL, 
	last_logged_seq BIGINT DEFAULT 0 NOT NULL, 
	last_consolidated_seq BIGINT DEFAULT 0 NOT NULL, 
	last_belong_to_index BIGINT DEFAULT 0 NOT NULL, 
	has_session_node BOOLEAN DEFAULT false NOT NULL, 
	pending_tokens BIGINT DEFAULT 0 NOT NULL, 
	last_check_turn BIGINT DEFAULT 0 NOT NULL, 
	version BIGINT DEFAULT 0 NOT NULL, 
	updated_at DATETIME NOT NULL, 
	CONSTRAINT pk_progress PRIMARY KEY (shelf, session_id)
);
CREATE TABLE leases (
	"key" VARCHAR(300) NOT NULL, 
	owner VARCHAR(300), 
	token BIGINT DEFAULT 0 NOT NULL, 
	acquired_at DATETIME, 
	expires_at DATETIME, 
	CONSTRAINT pk_leases PRIMARY KEY ("key")
);
CREATE TABLE retractions (
	id INTEGER NOT NULL, 
	shelf VARCHAR(200) NOT NULL, 
	session_id VARCHAR(200) NOT NULL, 
	ordinal BIGINT NOT NULL, 
	entry TEXT NOT NULL, 
	marker_seq BIGINT NOT NULL, 
	source_kind VARCHAR(200) NOT NULL, 
	outcome VARCHAR(40) NOT NULL, 
	detail TEXT, 
	at DATETIME NOT NULL, 
	CONSTRAINT pk_retractions PRIMARY KEY (id)
);
CREATE INDEX ix_retractions_session_id_ordinal ON retractions (session_id, ordinal);
CREATE TABLE audit (
	id INTEGER NOT NULL, 
	action VARCHAR(80) NOT NULL, 
	shelf VARCHAR(200), 
	session_id VARCHAR(200), 
	subject TEXT, 
	cause_marker_seq BIGINT, 
	source_kind VARCHAR(200), 
	outcome VARCHAR(40) NOT NULL, 
	detail TEXT, 
	at DATETIME NOT NULL, 
	CONSTRAINT pk_audit PRIMARY KEY (id)
);
CREATE INDEX ix_audit_session_id ON audit (session_id);
CREATE TABLE failures (
	id INTEGER NOT NULL, 
	task VARCHAR(100) NOT NULL, 
	session_id VARCHAR(300) NOT NULL, 
	attempts INTEGER DEFAULT 0 NOT NULL, 
	last_error TEXT DEFAULT '' NOT NULL, 
	permanent BOOLEAN DEFAULT false NOT NULL, 
	first_at DATETIME NOT NULL, 
	last_at DATETIME NOT NULL, 
	CONSTRAINT pk_failures PRIMARY KEY (id), 
	CONSTRAINT uq_failures_task_session_id UNIQUE (task, session_id)
);
CREATE TABLE model_calls (
	id INTEGER NOT NULL, 
	at DATETIME NOT NULL, 
	purpose VARCHAR(80) NOT NULL, 
	route_index INTEGER NOT NULL, 
	base_url TEXT NOT NULL, 
	model VARCHAR(200) NOT NULL, 
	effort VARCHAR(40) DEFAULT '' NOT NULL, 
	outcome VARCHAR(40) DEFAULT 'pending' NOT NULL, 
	ms INTEGER, 
	input_tokens INTEGER, 
	output_tokens INTEGER, 
	reasoning_tokens INTEGER, 
	session_id VARCHAR(200), 
	detail VARCHAR(200), 
	CONSTRAINT pk_model_calls PRIMARY KEY (id)
);
CREATE INDEX ix_model_calls_at ON model_calls (at);
CREATE TABLE provenance (
	shelf VARCHAR(200) NOT NULL, 
	name VARCHAR(300) NOT NULL, 
	kind VARCHAR(20) NOT NULL, 
	session_id VARCHAR(200), 
	route TEXT NOT NULL, 
	model VARCHAR(200) NOT NULL, 
	prompt_version VARCHAR(40) NOT NULL, 
	written_at DATETIME NOT NULL, 
	CONSTRAINT pk_provenance PRIMARY KEY (shelf, name)
);
CREATE TABLE shipped_logs (
	session_id VARCHAR(200) NOT NULL, 
	generation INTEGER NOT NULL, 
	log_name TEXT NOT NULL, 
	header JSON NOT NULL, 
	header_sha256 VARCHAR(64) NOT NULL, 
	shipped_end BIGINT DEFAULT 0 NOT NULL, 
	created_at DATETIME NOT NULL, 
	updated_at DATETIME NOT NULL, 
	CONSTRAINT pk_shipped_logs PRIMARY KEY (session_id, generation)
);
CREATE TABLE log_segments (
	session_id VARCHAR(200) NOT NULL, 
	generation INTEGER NOT NULL, 
	byte_offset BIGINT NOT NULL, 
	length BIGINT NOT NULL, 
	data BLOB NOT NULL, 
	shipped_at DATETIME NOT NULL, 
	CONSTRAINT pk_log_segments PRIMARY KEY (session_id, generation, byte_offset)
);
INSERT INTO alembic_version (version_num) VALUES ('last_message_1');
