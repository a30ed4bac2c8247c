"""What a call costs: the one price table, in US dollars per million tokens.

Prices are the providers' published list prices: the standard (synchronous) rates and the
batch rates (OpenAI's Batch API, Gemini's Batch Mode: half the standard price, answers
within 24 hours). Edit this table when they change; a model missing from it costs ``None``
("unknown"), never zero, so a report cannot understate a run's cost, unless it runs on this
machine (a server on the loopback, such as ``make llm-local``'s llama.cpp): no one bills
for that, so it costs $0. A model of the table served on the loopback (a local proxy to the
provider) keeps its price. Dated snapshots (``gpt-4o-mini-2024-07-18``) take the price of
their family.

Cached input with batch:

- OpenAI: the discounts stack. The Batch column of platform.openai.com/docs/pricing lists a
  cached-input price for each model that is half the standard cached price (gpt-5.4:
  $0.125 batch against $0.25 standard), so a batch request's cached tokens cost half of
  the cached rate.
- Gemini: the Batch column of ai.google.dev/gemini-api/docs/pricing halves input and output
  and lists context caching at the standard cached price. We charge a batch request's
  cached tokens at the standard cached rate: if Google does stack them, a bill here
  overstates the cost by at most that difference; it never understates it.
"""

import re
from dataclasses import dataclass
from decimal import Decimal

MILLION = Decimal(1_000_000)
HALF = Decimal("0.5")
# A snapshot's suffix: a date (OpenAI), a three-digit version (Google) or "latest".
SNAPSHOT_SUFFIX = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{3}|latest)")


@dataclass(frozen=True)
class Rates:
    input: Decimal
    output: Decimal
    cached_input: Decimal

    def halved(self, *, cached: bool) -> "Rates":
        """The batch rates: half of input and output, and of cached input if ``cached``."""
        return Rates(
            self.input * HALF,
            self.output * HALF,
            self.cached_input * HALF if cached else self.cached_input,
        )


@dataclass(frozen=True)
class Price:
    standard: Rates
    batch: Rates
    # The month of the published price this row was last checked against.
    listed: str = ""
    # Gemini's Pro models charge more for every token of a prompt longer than this.
    long_prompt_tokens: int | None = None
    long_prompt: Rates | None = None
    long_prompt_batch: Rates | None = None


def _price(
    input: str,
    output: str,
    cached: str,
    *,
    listed: str,
    batch_cached_halved: bool,
    long: tuple[int, str, str, str] | None = None,
) -> Price:
    standard = Rates(Decimal(input), Decimal(output), Decimal(cached))
    batch = standard.halved(cached=batch_cached_halved)
    if long is None:
        return Price(standard, batch, listed)
    threshold, long_in, long_out, long_cached = long
    long_rates = Rates(Decimal(long_in), Decimal(long_out), Decimal(long_cached))
    return Price(
        standard,
        batch,
        listed,
        threshold,
        long_rates,
        long_rates.halved(cached=batch_cached_halved),
    )


def _gemini(*args: str, listed: str, long: tuple[int, str, str, str] | None = None) -> Price:
    input, output, cached = args
    return _price(input, output, cached, listed=listed, batch_cached_halved=False, long=long)


def _openai(*args: str, listed: str) -> Price:
    input, output, cached = args
    return _price(input, output, cached, listed=listed, batch_cached_halved=True)


PRICES: dict[str, Price] = {
    # Google AI (ai.google.dev/gemini-api/docs/pricing); thinking tokens bill as output.
    "gemini-3.1-pro-preview": _gemini(
        "2.00", "12.00", "0.20", listed="2026-03", long=(200_000, "4.00", "18.00", "0.40")
    ),
    "gemini-3-pro-preview": _gemini(
        "2.00", "12.00", "0.20", listed="2025-11", long=(200_000, "4.00", "18.00", "0.40")
    ),
    "gemini-3-flash-preview": _gemini("0.50", "3.00", "0.05", listed="2026-07"),
    "gemini-3.1-flash-lite-preview": _gemini("0.25", "1.50", "0.025", listed="2026-03"),
    "gemini-2.5-pro": _gemini(
        "1.25", "10.00", "0.125", listed="2026-03", long=(200_000, "2.50", "15.00", "0.25")
    ),
    "gemini-2.5-flash": _gemini("0.30", "2.50", "0.03", listed="2026-03"),
    "gemini-2.5-flash-lite": _gemini("0.10", "0.40", "0.01", listed="2026-03"),
    "gemini-2.0-flash": _gemini("0.10", "0.40", "0.025", listed="2025-09"),
    # OpenAI (platform.openai.com/docs/pricing)
    "gpt-5.5": _openai("5.00", "30.00", "0.50", listed="2026-06"),
    "gpt-5.4": _openai("2.50", "15.00", "0.25", listed="2026-06"),
    "gpt-5.4-mini": _openai("0.75", "4.50", "0.075", listed="2026-06"),
    "gpt-5.4-nano": _openai("0.20", "1.25", "0.02", listed="2026-06"),
    "gpt-5.1": _openai("1.25", "10.00", "0.125", listed="2025-11"),
    "gpt-5": _openai("1.25", "10.00", "0.125", listed="2026-04"),
    "gpt-5-mini": _openai("0.25", "2.00", "0.025", listed="2026-04"),
    "gpt-5-nano": _openai("0.05", "0.40", "0.005", listed="2026-04"),
    "o3": _openai("2.00", "8.00", "0.50", listed="2026-04"),
    "o4-mini": _openai("1.10", "4.40", "0.275", listed="2026-04"),
    "o3-mini": _openai("1.10", "4.40", "0.55", listed="2025-09"),
    "gpt-4.1": _openai("2.00", "8.00", "0.50", listed="2026-04"),
    "gpt-4.1-mini": _openai("0.40", "1.60", "0.10", listed="2026-04"),
    "gpt-4.1-nano": _openai("0.10", "0.40", "0.025", listed="2026-04"),
    "gpt-4o": _openai("2.50", "10.00", "1.25", listed="2025-09"),
    "gpt-4o-mini": _openai("0.15", "0.60", "0.075", listed="2025-09"),
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
    model: str,
    *,
    input_tokens: int,
    output_tokens: int,
    cached_tokens: int,
    local: bool = False,
    batch: bool = False,
) -> Decimal | None:
    """Dollars for one call; ``input_tokens`` includes ``cached_tokens``, as both APIs count.

    ``local``: the server runs on this machine, so a model the table does not know is free.
    ``batch``: the call went through the provider's batch API, at its batch rates.
    """
    price = price_for(model)
    if price is None:
        return Decimal(0) if local else None
    rates = price.batch if batch else price.standard
    long = price.long_prompt_batch if batch else price.long_prompt
    if long and price.long_prompt_tokens and input_tokens > price.long_prompt_tokens:
        rates = long
    fresh = max(0, input_tokens - cached_tokens)
    total = fresh * rates.input + output_tokens * rates.output + cached_tokens * rates.cached_input
    return total / MILLION
