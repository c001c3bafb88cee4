"""Writers of the run directory: JUnit, audit, summary. They read only result objects."""
