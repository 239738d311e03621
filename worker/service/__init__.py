"""Run ``memory-worker run`` at login under the user's service manager: a ``systemd --user`` unit
on Linux (:mod:`.systemd`), a launchd LaunchAgent on macOS (:mod:`.launchd`), both built from one
:class:`.spec.ServiceSpec`. ``memory-worker service`` (:mod:`worker.commands.service`) drives them;
docs/service.md says what each platform runs and how to see the logs.

Nothing here imports the runtime: the modules use the standard library only.
"""
