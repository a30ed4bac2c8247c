"""Load the built-in demo: role groups, demo users, and the demo dataset. Safe to re-run."""

from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from rubrics.bundle import BundleImportError, bundle_import, kind_plural
from sejury_web.roles import Role, roles_sync
from sejury_web.users import user_create

DEMO_BUNDLE = Path(settings.BASE_DIR) / "rubrics" / "demo" / "bundle.jsonl"
DEMO_DATASET = "Demo"
DEMO_DESCRIPTION = (
    "Six small bugs in several languages, written for this demo, with candidate patches that "
    "cover a correct fix, an alternative correct fix, a test-only change, a symptom-masking "
    "fix and an incomplete fix. Not real data."
)
DEMO_PASSWORD = "sejury-demo"  # noqa: S105 - printed on purpose: local demo accounts only
DEMO_USERS: list[tuple[str, list[str]]] = [
    ("lead", [Role.LEAD]),
    ("reviewer", [Role.REVIEWER]),
    ("reviewer2", [Role.REVIEWER]),
    ("annotator1", [Role.ANNOTATOR]),
    ("annotator2", [Role.ANNOTATOR]),
    ("annotator3", [Role.ANNOTATOR]),
]


class Command(BaseCommand):
    help = "Create the demo users and import the demo dataset (idempotent)."

    def handle(self, *args: Any, **options: Any) -> None:
        roles_sync()
        User = get_user_model()
        for username, roles in DEMO_USERS:
            user = User.objects.filter(username=username).first()
            if user is None:
                user_create(username=username, password=DEMO_PASSWORD, roles=roles)
            elif not user.has_usable_password():
                # An annotator first named by an imported label: make it a demo login.
                user.set_password(DEMO_PASSWORD)
                user.save(update_fields=["password"])
        try:
            with DEMO_BUNDLE.open("rb") as source:
                summary = bundle_import(
                    source=source,
                    dataset_name=DEMO_DATASET,
                    acting_user=None,
                    filename=DEMO_BUNDLE.name,
                )
        except BundleImportError as exc:  # the demo bundle is ours: this is a bug
            raise SystemExit(f"The demo bundle is invalid:\n{exc}") from exc
        if not summary.dataset.description:
            summary.dataset.description = DEMO_DESCRIPTION
            summary.dataset.save(update_fields=["description"])
        counts = ", ".join(
            f"{c.created + c.updated + c.unchanged} {kind_plural(kind)}"
            for kind, c in summary.counts.items()
        )
        self.stdout.write(f"Demo dataset {summary.dataset.name!r}: {counts}.")
        self.stdout.write("\nDemo logins (password for all: " + DEMO_PASSWORD + "):")
        for username, roles in DEMO_USERS:
            self.stdout.write(f"  {username:<12} {', '.join(roles)}")
