"""The judging app's URLs: one list per domain package, all in the ``judging`` namespace."""

from judging.annotations import urls as annotations
from judging.calibration import urls as calibration
from judging.consensus import urls as consensus
from judging.judges import trust_urls as judge_trust
from judging.judges import urls as judges
from judging.refine import urls as refine
from judging.reports import urls as reports
from judging.runs import urls as runs

app_name = "judging"

urlpatterns = [
    *runs.urlpatterns,
    *annotations.urlpatterns,
    *consensus.urlpatterns,
    *calibration.urlpatterns,
    *reports.urlpatterns,
    *refine.urlpatterns,
    *judges.urlpatterns,
    *judge_trust.urlpatterns,
]
