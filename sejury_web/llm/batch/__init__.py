"""Provider batch APIs: many requests in one job, answered within 24 hours at half the price.

``jobs`` writes a round's jobs and requests, submits, polls and stores their results as
ordinary ``LLMCall`` rows; ``base`` is what a provider's client implements; ``openai_batch``
and ``gemini_batch`` speak OpenAI's Batch API and Gemini's Batch Mode through their SDKs.
The rounds themselves (what depends on what) belong to the caller: ``judging.runs.batch``.
"""
