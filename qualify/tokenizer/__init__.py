"""Tokenizer export for benchmark clients, and its verification in the client's own environment."""
