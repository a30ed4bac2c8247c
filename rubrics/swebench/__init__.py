"""SWE-bench in: the benchmark's instances, a model run's predictions and the harness's
results report, turned into bundle records (``read``, ``results``) and imported through the
bundle's import (``services``)."""
