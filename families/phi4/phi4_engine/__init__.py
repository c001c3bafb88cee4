"""The phi4 family's engine: Phi-4-multimodal's checkpoint, tokenizer, plans and runtimes."""
