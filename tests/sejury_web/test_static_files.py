"""Static files are served by the app itself, as deployed (docs/operations/deploy.md):
WhiteNoise, from what collectstatic wrote, compressed, before any login or database work."""

import gzip
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client, override_settings

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.django_db
def test_collected_static_files_are_served_gzipped_without_a_login(tmp_path: Path) -> None:
    with override_settings(STATIC_ROOT=tmp_path):
        call_command("collectstatic", "--noinput", verbosity=0)
        assert (tmp_path / "css" / "app.css.gz").exists()  # written by collectstatic
        client = Client()  # a new handler: WhiteNoise reads STATIC_ROOT when it starts
        plain = client.get("/static/css/app.css")
        zipped = client.get("/static/css/app.css", HTTP_ACCEPT_ENCODING="gzip")
    original = (ROOT / "static" / "css" / "app.css").read_bytes()
    assert plain.status_code == 200, plain.status_code  # not the login page's redirect
    assert b"".join(plain.streaming_content) == original
    assert "max-age" in plain["Cache-Control"]
    assert zipped["Content-Encoding"] == "gzip"
    assert gzip.decompress(b"".join(zipped.streaming_content)) == original
