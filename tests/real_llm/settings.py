"""Settings of the worker a ``real_llm`` test starts: the test settings, pointed at the real
local server named by ``SEJURY_REAL_LLM_BASE_URL`` and ``SEJURY_REAL_LLM_MODEL`` (which the
test sets from the server it found). The test settings themselves never reach a model."""

import os

from sejury_web.settings_test import *  # noqa: F403
from sejury_web.settings_test import SEJURY_LLM

SEJURY_LLM = {
    **SEJURY_LLM,
    "PROVIDER": "openai",
    "MODEL": os.environ.get("SEJURY_REAL_LLM_MODEL", ""),
    "OPENAI_BASE_URL": os.environ.get("SEJURY_REAL_LLM_BASE_URL", ""),
    "OPENAI_API_KEY": "local",
    "MAX_CONCURRENCY": 1,
    "TIMEOUT": 600.0,
    "MAX_OUTPUT_TOKENS": 1024,
    "LOCAL_FREE": True,
}
