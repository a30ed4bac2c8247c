"""Benchmark: the main pages under load, at the size real teams have, served as deployed.

Run with ``make bench`` (or ``.venv/bin/python bench/load.py [--clients 20] [--seconds 60]``).
It builds a 10,000-patch dataset (``judging/reports/synthetic.py``: 5 labels a patch from 20
annotators, two finished runs) and a campaign, in a throwaway SQLite database (or in
``DATABASE_URL``'s, whose bench datasets it deletes afterwards), collects the static files
and starts the server the way ``docs/operations/deploy.md`` says: gunicorn, two workers a
core, static files served by WhiteNoise. Then N clients, each a logged-in browser session of
a lead, a reviewer or an annotator in turn, ask for every main page of their role over and
over (the way a browser does: the page, then what it loads through htmx, one at a time) for
the given time.

It prints, per page, the requests, p50 and p95 of the response time, the errors (anything
but 200, or no answer), and the ratio of p95 to the target: p95 under 1 s for every page at
20 clients, and no error (below 1.0 is within target).
"""

import argparse
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sejury_web.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-insecure-key-" + "x" * 40)
os.environ.setdefault("SEJURY_VAR_DIR", tempfile.mkdtemp(prefix="sejury-bench-load-"))
os.environ.setdefault("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver")
os.environ["DEBUG"] = "0"  # as deployed: no debug toolbar of Django's, templates cached

import django  # noqa: E402

django.setup()

import requests  # noqa: E402
from django.contrib.auth.models import User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.urls import reverse  # noqa: E402

from judging.annotations.services import campaign_create  # noqa: E402
from judging.models import Campaign, JudgingRun, PatchJudgment  # noqa: E402
from judging.reports.selectors import SECTIONS  # noqa: E402
from judging.reports.synthetic import Shape, synthetic_dataset  # noqa: E402
from rubrics.models import Bug, Dataset, Patch  # noqa: E402
from sejury_web.roles import Role  # noqa: E402
from sejury_web.users import user_create  # noqa: E402

DATASET = "bench-load-10k"
SHAPE = Shape(bugs=2_000, patches_per_bug=5, annotators=20, labels_per_patch=5, runs=2)
CAMPAIGN_PATCHES = 300
PASSWORD = "bench-load-password"  # a throwaway user in a throwaway database
USERS = {
    Role.LEAD: "bench-load-lead",
    Role.REVIEWER: "bench-load-reviewer",
    Role.ANNOTATOR: "bench-load-annotator",
}
TARGET_P95_S = 1.0
WARM_UP_S = 5.0


@dataclass(frozen=True)
class Page:
    name: str
    url: str
    htmx: bool = False  # asked as the page's htmx does (a section, a card)


@dataclass
class Timings:
    seconds: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, page: str, took: float, error: str | None) -> None:
        with self.lock:
            self.seconds[page].append(took)
            if error:
                self.errors[page].append(error)


def build() -> tuple[Dataset, dict[str, list[Page]]]:
    """The dataset, its users and campaign, and each role's pages."""
    call_command("migrate", verbosity=0)
    dataset = Dataset.objects.filter(name=DATASET).first()
    if dataset is None:
        start = time.perf_counter()
        dataset = synthetic_dataset(DATASET, SHAPE)
        print(f"  made {DATASET!r} in {time.perf_counter() - start:.0f} s")
    users = {}
    for role, username in USERS.items():
        user = User.objects.filter(username=username).first()
        if user is None:
            user = user_create(actor=None, username=username, password=PASSWORD, roles=[role])
        users[role] = user
    campaign = Campaign.objects.filter(dataset=dataset).first()
    if campaign is None:
        campaign = campaign_create(
            dataset=dataset,
            name="Bench load campaign",
            purpose=Campaign.Purpose.BENCHMARK,
            selection=Campaign.Selection.SAMPLE,
            sample_size=CAMPAIGN_PATCHES,
            seed=0,
            annotators=[users[Role.ANNOTATOR]],
            overlap=1,
            show_rubric=False,
            actor=users[Role.LEAD],
        )
    runs = list(JudgingRun.objects.filter(dataset=dataset).order_by("pk"))
    bug = Bug.objects.filter(dataset=dataset).order_by("sort_key")[1234]
    patch = Patch.objects.filter(bug=bug).order_by("sort_key").first()
    assert patch is not None
    judgment = PatchJudgment.objects.get(run=runs[0], patch=patch)
    slug = dataset.slug
    report = reverse("judging:report", args=[slug])
    both = [
        Page("dataset list", reverse("rubrics:dataset_list")),
        Page("dataset page", reverse("rubrics:dataset_detail", args=[slug])),
        Page("dataset page 50", reverse("rubrics:dataset_detail", args=[slug]) + "?page=50"),
        Page("bug page", reverse("rubrics:bug_detail", args=[slug, bug.key])),
        Page("patch page", reverse("rubrics:patch_detail", args=[slug, patch.key])),
        Page("static css", "/static/css/app.css"),
    ]
    reviewer = [*both, Page("rubric queue", reverse("rubrics:review_queue"))]
    lead = [
        Page("home", reverse("home")),
        *both,
        Page("run list", reverse("judging:run_list")),
        *(
            Page(f"run page {n}", reverse("judging:run_detail", args=[run.pk]))
            for n, run in enumerate(runs, 1)
        ),
        Page("verdict page", reverse("judging:verdict_detail", args=[runs[0].pk, judgment.pk])),
        Page("report list", reverse("judging:report_index")),
        Page("report shell", report),
        *(
            Page(f"report {section}", f"{report}?section={section}", htmx=True)
            for section in SECTIONS
        ),
        Page("campaign list", reverse("judging:campaign_list")),
        Page("campaign page", reverse("judging:campaign_detail", args=[campaign.pk])),
        Page("adjudication queue", reverse("judging:adjudication_queue", args=[slug])),
        Page("calibration", reverse("judging:calibration")),
        Page("users", reverse("user_list")),
    ]
    annotator = [
        Page("annotate: campaigns", reverse("judging:annotate_campaigns")),
        Page("annotate: queue", reverse("judging:annotate_queue", args=[campaign.pk])),
        Page("annotate: a patch", reverse("judging:annotate", args=[campaign.pk, 1])),
        Page("my labels", reverse("judging:my_labels")),
        Page("static css", "/static/css/annotate.css"),
    ]
    return dataset, {Role.LEAD: lead, Role.REVIEWER: reviewer, Role.ANNOTATOR: annotator}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def serve(port: int, workers: int) -> subprocess.Popen[bytes]:
    """gunicorn as docs/operations/deploy.md runs it, after collectstatic."""
    call_command("collectstatic", "--noinput", verbosity=0)
    gunicorn = shutil.which("gunicorn", path=str(Path(sys.executable).parent)) or "gunicorn"
    log = Path(os.environ["SEJURY_VAR_DIR"]) / "bench-load-gunicorn.log"
    with log.open("ab") as output:
        server = subprocess.Popen(
            [
                gunicorn,
                "sejury_web.wsgi",
                "--workers",
                str(workers),
                "--bind",
                f"127.0.0.1:{port}",
                "--log-level",
                "warning",
            ],
            cwd=ROOT,
            env=os.environ.copy(),
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 120  # each worker imports the app: slow on a busy machine
    while time.monotonic() < deadline and server.poll() is None:
        try:
            if requests.get(f"http://127.0.0.1:{port}/accounts/login/", timeout=30).ok:
                return server
        except requests.RequestException:
            time.sleep(0.5)
    server.kill()
    raise SystemExit(f"gunicorn did not answer within 120 s: see {log}")


def log_in(base: str, username: str) -> requests.Session:
    session = requests.Session()
    page = session.get(f"{base}/accounts/login/", timeout=60)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert token, "no CSRF token on the login page"
    answer = session.post(
        f"{base}/accounts/login/",
        data={"username": username, "password": PASSWORD, "csrfmiddlewaretoken": token[1]},
        headers={"Referer": f"{base}/accounts/login/"},
        timeout=60,
        allow_redirects=False,
    )
    assert answer.status_code == 302, f"{username} could not log in: {answer.status_code}"
    return session


def client(
    base: str,
    session: requests.Session,
    pages: list[Page],
    offset: int,
    warm_until: float,
    stop_at: float,
    timings: Timings,
) -> None:
    """Ask for ``pages`` in turn, from ``offset``, until ``stop_at``; time what ends after
    ``warm_until``."""
    step = offset
    while time.monotonic() < stop_at:
        page = pages[step % len(pages)]
        step += 1
        headers = {"HX-Request": "true"} if page.htmx else {}
        start = time.monotonic()
        error = None
        try:
            answer = session.get(base + page.url, headers=headers, timeout=120)
            answer.content  # noqa: B018 - read the whole body, as a browser does
            if answer.status_code != 200:
                error = f"{answer.status_code}"
        except requests.RequestException as failure:
            error = type(failure).__name__
        end = time.monotonic()
        if start >= warm_until:
            timings.add(page.name, end - start, error)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument(
        "--workers", type=int, default=2 * (os.cpu_count() or 1), help="default: two a core"
    )
    parser.add_argument("--keep", action="store_true", help="keep the dataset afterwards")
    args = parser.parse_args()

    from django.db import connection

    print(
        f"database: {connection.vendor}; {args.clients} clients, {args.seconds:.0f} s,"
        f" gunicorn with {args.workers} workers"
    )
    _, pages = build()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = serve(port, args.workers)
    try:
        roles = [Role.LEAD, Role.REVIEWER, Role.ANNOTATOR]
        sessions = []
        for number in range(args.clients):
            role = roles[number % len(roles)]
            sessions.append((role, log_in(base, USERS[role])))
        # Every page answers its role before the clock starts: a wrong URL is not a timing.
        for role, session in sessions[: len(roles)]:
            for page in pages[role]:
                answer = session.get(base + page.url, timeout=300)
                assert answer.status_code == 200, f"{role} {page.name}: {answer.status_code}"
        timings = Timings()
        now = time.monotonic()
        warm_until, stop_at = now + WARM_UP_S, now + WARM_UP_S + args.seconds
        threads = [
            threading.Thread(
                target=client,
                args=(base, session, pages[role], number, warm_until, stop_at, timings),
            )
            for number, (role, session) in enumerate(sessions)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
        if not args.keep:
            Dataset.objects.filter(name=DATASET).delete()
            User.objects.filter(username__in=USERS.values()).delete()

    print(
        f"{'page':<24} {'requests':>8} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}"
        f" {'errors':>6}   ratio (p95 / {TARGET_P95_S * 1000:.0f} ms)"
    )
    everything: list[float] = []
    worst = 0.0
    for name, seconds in sorted(
        timings.seconds.items(), key=lambda item: -percentile(item[1], 0.95)
    ):
        everything += seconds
        p95 = percentile(seconds, 0.95)
        worst = max(worst, p95 / TARGET_P95_S)
        errors = timings.errors.get(name, [])
        print(
            f"{name:<24} {len(seconds):>8} {statistics.median(seconds) * 1000:>8.0f}"
            f" {p95 * 1000:>8.0f} {max(seconds) * 1000:>8.0f} {len(errors):>6}"
            f"   {p95 / TARGET_P95_S:5.2f}"
            + (f"  ({', '.join(sorted(set(errors)))})" if errors else "")
        )
    failed = sum(len(errors) for errors in timings.errors.values())
    print(
        f"{'all pages':<24} {len(everything):>8} {statistics.median(everything) * 1000:>8.0f}"
        f" {percentile(everything, 0.95) * 1000:>8.0f} {max(everything) * 1000:>8.0f}"
        f" {failed:>6}   worst page {worst:.2f}"
    )
    print(f"  {len(everything) / args.seconds:.1f} requests a second; errors {failed} (target 0)")


if __name__ == "__main__":
    main()
