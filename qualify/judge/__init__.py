"""Stage 7, judge: one verdict ladder over every signal of a run, and the judged RunResult."""
