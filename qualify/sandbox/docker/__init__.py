"""The docker backend: the E2E in a container of ``--image``, capped by the engine."""
