"""Stage 9, publish: the one sanitizer and every public channel of a run (public/, GitHub)."""
