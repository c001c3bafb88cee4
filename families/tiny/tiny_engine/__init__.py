"""The embedded default family of qualify: a small real Phi-3 checkpoint, engine and reference.

The pieces mirror a production engine family: a Hugging Face checkpoint (created and cached
on first use), an engine build with one bf16 plan per network published as a bundle, a native
runtime that runs the plans with a KV cache, and an FP32 eager reference.
"""
