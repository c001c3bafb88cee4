"""Stage 5, evidence: parsers of real artifacts (CUDA OOM messages, JUnit, kernel and console
logs, docker state, pytest report logs). Each takes text or a path and never raises on content."""
