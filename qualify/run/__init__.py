"""Stage 3, run: start the E2E in its sandbox, watch it (monitor, phases, logs), stop it."""
