"""The family kit: what a model family's E2E and engine share, importable by any family.

A family (``families/tiny``, ``families/phi4``, or one of your own) writes only what is its
own: the model, its networks, its sizes, its prompts. The kit supplies the rest:

- ``harness.kit.options``: options read from ``[options]`` of family.toml and validated;
- ``harness.kit.sizes``: a size by name (one-line error) and the hash naming a cached checkpoint;
- ``harness.kit.checkpoint``: the checkpoint cache (created in a child process, published by a
  rename), transformers loading, and a safetensors writer that writes tensor by tensor;
- ``harness.kit.build``: the staged engine build (one plan per network, staged to disk and
  released before the next) and the bundle it publishes (``harness.kit.bundle``);
- ``harness.kit.native``: a runtime over a published bundle's prefill and decode plans;
- ``harness.kit.generation``: greedy generation with top-k log-probabilities, recorded as
  parity cases;
- ``harness.kit.e2e``: the E2E test skeleton (run state, fixtures, generation and checks);
- ``harness.kit.workspace``, ``harness.kit.allocator``, ``harness.kit.durable``: per-run engine
  directories, glibc's mmap threshold, fsync helpers.

Like the rest of ``harness``, importing any of these needs only the standard library: torch,
transformers and pytest are imported inside the functions that use them.
"""
