"""What a call costs: the one price table, in US dollars per million tokens.

Prices are the providers' published list prices for standard (non-batch) requests. Edit this
table when they change; a model missing from it costs ``None`` ("unknown"), never zero, so a
report cannot understate a run's cost, unless it runs on this machine (a server on the
loopback, such as ``make llm-local``'s llama.cpp): no one bills for that, so it costs $0.
A model of the table served on the loopback (a local proxy to the provider) keeps its price.
Dated snapshots (``gpt-4o-mini-2024-07-18``) take the price of their family.
"""

import re
from dataclasses import dataclass
from decimal import Decimal

MILLION = Decimal(1_000_000)
# A snapshot's suffix: a date (OpenAI), a three-digit version (Google) or "latest".
SNAPSHOT_SUFFIX = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{3}|latest)")


@dataclass(frozen=True)
class Rates:
    input: Decimal
    output: Decimal
    cached_input: Decimal


@dataclass(frozen=True)
class Price:
    standard: Rates
    # Gemini 2.5 Pro charges more for every token of a prompt longer than this.
    long_prompt_tokens: int | None = None
    long_prompt: Rates | None = None


def _price(
    input: str, output: str, cached: str, long: tuple[int, str, str, str] | None = None
) -> Price:
    standard = Rates(Decimal(input), Decimal(output), Decimal(cached))
    if long is None:
        return Price(standard)
    threshold, long_in, long_out, long_cached = long
    return Price(
        standard, threshold, Rates(Decimal(long_in), Decimal(long_out), Decimal(long_cached))
    )


PRICES: dict[str, Price] = {
    # Google AI (ai.google.dev/gemini-api/docs/pricing); thinking tokens bill as output.
    "gemini-2.5-pro": _price("1.25", "10.00", "0.125", (200_000, "2.50", "15.00", "0.25")),
    "gemini-2.5-flash": _price("0.30", "2.50", "0.03"),
    "gemini-2.5-flash-lite": _price("0.10", "0.40", "0.01"),
    "gemini-2.0-flash": _price("0.10", "0.40", "0.025"),
    # OpenAI (platform.openai.com/docs/pricing)
    "gpt-4o-mini": _price("0.15", "0.60", "0.075"),
    "gpt-4o": _price("2.50", "10.00", "1.25"),
    "gpt-4.1": _price("2.00", "8.00", "0.50"),
    "gpt-4.1-mini": _price("0.40", "1.60", "0.10"),
    "gpt-4.1-nano": _price("0.10", "0.40", "0.025"),
    "gpt-5": _price("1.25", "10.00", "0.125"),
    "gpt-5-mini": _price("0.25", "2.00", "0.025"),
    "gpt-5-nano": _price("0.05", "0.40", "0.005"),
}


def price_for(model: str) -> Price | None:
    """The price of ``model`` or of the family it is a snapshot of; ``None`` if unknown.

    Only snapshot suffixes match a family: ``gpt-4o-audio-preview`` is another model with
    other prices, so it is unknown rather than charged as ``gpt-4o``.
    """
    name = model.removeprefix("models/")
    if name in PRICES:
        return PRICES[name]
    for family, price in PRICES.items():
        if name.startswith(family) and SNAPSHOT_SUFFIX.fullmatch(name[len(family) :]):
            return price
    return None


def call_cost(
    model: str, *, input_tokens: int, output_tokens: int, cached_tokens: int, local: bool = False
) -> Decimal | None:
    """Dollars for one call; ``input_tokens`` includes ``cached_tokens``, as both APIs count.

    ``local``: the server runs on this machine, so a model the table does not know is free.
    """
    price = price_for(model)
    if price is None:
        return Decimal(0) if local else None
    rates = price.standard
    if price.long_prompt and price.long_prompt_tokens and input_tokens > price.long_prompt_tokens:
        rates = price.long_prompt
    fresh = max(0, input_tokens - cached_tokens)
    total = fresh * rates.input + output_tokens * rates.output + cached_tokens * rates.cached_input
    return total / MILLION
