"""A family's options (``[options]`` of family.toml), read through ``harness.option``."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Self

import harness


@dataclass(frozen=True)
class E2EOptions:
    """The options every kit E2E has; a family subclasses it (a frozen dataclass too), adds its
    own, and extends ``validate``. ``qualify run --set name=value`` overrides one."""

    retain_plans: bool = False
    """Keep every built plan in memory until the build ends (the retention bug class)."""
    prompts: int = 10
    """Number of parity cases."""
    new_tokens: int = 30
    """Greedy tokens generated per case (fewer when the model ends its turn)."""

    @classmethod
    def from_harness(cls) -> Self:
        """Each option from the run's environment, typed like its default, then validated."""
        defaults = cls()
        values = {f.name: harness.option(f.name, getattr(defaults, f.name)) for f in fields(cls)}
        options = cls(**values)
        options.validate()
        return options

    def max_prompts(self) -> int:
        """How many parity cases the family's prompts provide."""
        raise NotImplementedError(f"{type(self).__name__} does not say how many prompts it has")

    def validate(self) -> None:
        """Reject values the family cannot run with, naming the option and the valid range."""
        limit = self.max_prompts()
        if not 1 <= self.prompts <= limit:
            raise ValueError(f"prompts={self.prompts} must be between 1 and {limit}")
        if self.new_tokens < 1:
            raise ValueError(f"new_tokens={self.new_tokens} must be at least 1")


def one_of(name: str, value: str, valid: tuple[str, ...]) -> None:
    """A one-line error unless ``value`` is among ``valid``."""
    if value not in valid:
        raise ValueError(f"{name}={value!r} is not one of {', '.join(valid)}")
