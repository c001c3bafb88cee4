"""qualify: run a model family's E2E under real memory caps and explain how it ended."""

__version__ = "0.1.0"
