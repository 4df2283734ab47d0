"""The run's core: everything a run is made of, importing nothing of reins above it.

- `_events`, `_messages`, `_stop`, `_errors`: the typed events of the log, the conversation,
  the closed set of stop reasons, the project's errors;
- `_model`, `_actions`: the model protocol, and the strict JSON action contract;
- `_state`, `_repetition`: the run's state as a pure fold of its events (with the repetition
  count its guards read);
- `_guard_settings`: which guards a run has on, recorded in its config;
- `_loop`, `_scope`, `_cancel`: the loop (THINK -> ACT -> OBSERVE), a tool call's ties to the
  run, cooperative cancellation;
- what the layers above implement or share: `_policy` (hooks and verdicts), `_approval` and
  `_questions` (asking a person), `_caps` (the offer at a cap), `_log` (the event log
  protocol), `_ports` (the context, tools and trace the loop is handed);
- small utilities every layer uses: `_paths`, `_files`, `_threads`, `_unicode`.

The public names are re-exported by `reins` itself; import them from there. Nothing is imported
here, so that loading one part does not load them all.
"""
