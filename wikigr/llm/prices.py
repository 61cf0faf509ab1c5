"""Cost estimates from Claude's published list prices (no batch or negotiated discounts)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Price", "estimate_cost", "price_for"]


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens. A model priced by prompt size has a long-prompt tier:
    prompts over ``long_threshold`` input tokens pay ``long_input`` / ``long_output``."""

    input: float
    output: float
    long_threshold: int | None = None
    long_input: float = 0.0
    long_output: float = 0.0


# Published list prices by model-id prefix; the longest matching prefix wins.
_PRICES: dict[str, Price] = {
    "claude-fable-5-2": Price(8.0, 40.0),
    "claude-fable": Price(10.0, 50.0),
    "claude-opus-5-5": Price(4.0, 20.0),
    "claude-opus-5": Price(5.0, 25.0),
    "claude-opus-4-8": Price(5.0, 25.0),
    "claude-opus-4-7": Price(5.0, 25.0),
    "claude-opus-4-6": Price(5.0, 25.0),
    "claude-opus-4-5": Price(5.0, 25.0),
    "claude-opus-4": Price(15.0, 75.0),
    "claude-sonnet-5": Price(2.0, 10.0),
    "claude-sonnet-4": Price(3.0, 15.0),
    "claude-haiku-5-5": Price(0.10, 0.50, long_threshold=100_000, long_input=0.50, long_output=2.50),
    "claude-haiku-4-5": Price(1.0, 5.0),
    "claude-3-5-haiku": Price(0.80, 4.0),
    "claude-3-haiku": Price(0.25, 1.25),
}
# A model id not in the table is priced by the family its name contains.
_FAMILY_PRICES: dict[str, Price] = {
    "fable": Price(10.0, 50.0),
    "opus": Price(15.0, 75.0),
    "sonnet": Price(3.0, 15.0),
    "haiku": Price(1.0, 5.0),
}
_FALLBACK_PRICE = _FAMILY_PRICES["sonnet"]
_CACHE_WRITE_FACTOR = 1.25  # a 5-minute cache write costs 1.25x the input price
_CACHE_READ_FACTOR = 0.10


def price_for(model: str) -> Price:
    """The list price of ``model``: by longest known prefix, else by family, else Sonnet's."""
    name = model.strip().lower()
    best = max((p for p in _PRICES if name.startswith(p)), key=len, default=None)
    if best is not None:
        return _PRICES[best]
    for family, price in _FAMILY_PRICES.items():
        if family in name:
            return price
    return _FALLBACK_PRICE


def estimate_cost(
    model: str,
    input_tokens: int,
    output_tokens: int,
    *,
    cache_write_tokens: int = 0,
    cache_read_tokens: int = 0,
) -> float:
    """An estimate in US dollars from list prices (no batch or negotiated discounts)."""
    price = price_for(model)
    per_in, per_out = price.input, price.output
    prompt = input_tokens + cache_write_tokens + cache_read_tokens
    if price.long_threshold is not None and prompt > price.long_threshold:
        per_in, per_out = price.long_input, price.long_output
    dollars = (
        input_tokens * per_in
        + cache_write_tokens * per_in * _CACHE_WRITE_FACTOR
        + cache_read_tokens * per_in * _CACHE_READ_FACTOR
        + output_tokens * per_out
    )
    return dollars / 1_000_000
