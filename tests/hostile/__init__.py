"""The hostile suite: what an attacker who controls the model, a file or a cloned project tried,
as tests that fail if the hole opens again (issue 26)."""
