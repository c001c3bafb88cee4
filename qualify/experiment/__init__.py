"""Many runs of one family judged as a method: A/B of a runtime policy, headroom of a cap.

Each repetition is a whole ``qualify run`` in its own process and its own run directory;
this package plans the repetitions, reads their audits back and summarises them.
"""
