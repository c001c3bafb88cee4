"""One module per command; each exposes a plain function returning an exit code."""
