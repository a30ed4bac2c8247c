"""A real Label Studio, found on the loopback through the environment
(``scripts/label_studio_local.py start`` prints it): ``SEJURY_LABEL_STUDIO_URL``, and its first
user's ``LABEL_STUDIO_USERNAME`` (an e-mail), ``LABEL_STUDIO_PASSWORD`` and
``LABEL_STUDIO_USER_TOKEN``. Without one the tests skip saying how to start it, or fail when
``SEJURY_REQUIRE_LABEL_STUDIO=1`` (as ``.ci/run`` sets after starting it)."""

import os
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin

import pytest
import requests

START = 'eval "$(python3 scripts/label_studio_local.py start)" starts one'
TIMEOUT_S = 60


class LabelStudioApi:
    """Label Studio's HTTP API as one of its users: by their token, or by a browser-like
    session (cookies and the CSRF token) for its pages."""

    def __init__(self, url: str, token: str | None = None) -> None:
        self.url = url
        self.http = requests.Session()
        if token:
            self.http.headers["Authorization"] = f"Token {token}"

    def call(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        response = self.http.request(method, urljoin(self.url, path), timeout=TIMEOUT_S, **kwargs)
        if response.status_code >= 400:
            raise AssertionError(
                f"Label Studio: {method} {path} answered {response.status_code}: "
                f"{response.text[:500]}"
            )
        return response

    def get(self, path: str, **kwargs: Any) -> Any:
        return self.call("GET", path, **kwargs).json()

    def post(self, path: str, body: Any) -> Any:
        return self.call("POST", path, json=body).json()

    def patch(self, path: str, body: Any) -> Any:
        return self.call("PATCH", path, json=body).json()

    def form(self, path: str, fields: dict[str, str]) -> requests.Response:
        """A form of its pages posted as a browser does: the CSRF token of the page's cookie,
        the page as referrer; redirects not followed."""
        self.call("GET", path)
        csrf = self.http.cookies["csrftoken"]
        return self.call(
            "POST",
            path,
            data={"csrfmiddlewaretoken": csrf, **fields},
            headers={"Referer": urljoin(self.url, path)},
            allow_redirects=False,
        )


@dataclass(frozen=True)
class LabelStudio:
    url: str
    username: str  # its first user's e-mail
    password: str
    token: str

    def api(self) -> LabelStudioApi:
        """The API as its first user, an administrator."""
        return LabelStudioApi(self.url, self.token)

    def user(self, email: str, password: str, username: str) -> tuple[LabelStudioApi, int]:
        """The API as another user (signed up through the organisation's invite link, as a
        person joins, or logged in if signed up already), with ``username`` set; and its id."""
        browser = LabelStudioApi(self.url)
        login = browser.form("/user/login/", {"email": email, "password": password})
        if "sessionid" not in browser.http.cookies or login.status_code != 302:
            invite = self.api().get("/api/invite")["invite_url"]
            signup = browser.form(invite, {"email": email, "password": password})
            assert signup.status_code == 302, signup.text[:500]
        token = browser.get("/api/current-user/token")["token"]
        api = LabelStudioApi(self.url, token)
        me = api.get("/api/current-user/whoami")
        api.patch(f"/api/users/{me['id']}/", {"username": username})
        return api, int(me["id"])


def find_label_studio() -> LabelStudio | str:
    """The Label Studio of the environment, or why there is none."""
    url = os.environ.get("SEJURY_LABEL_STUDIO_URL", "").rstrip("/")
    if not url:
        return f"SEJURY_LABEL_STUDIO_URL is not set: {START}"
    names = ("LABEL_STUDIO_USERNAME", "LABEL_STUDIO_PASSWORD", "LABEL_STUDIO_USER_TOKEN")
    missing = [name for name in names if not os.environ.get(name)]
    if missing:
        return f"{', '.join(missing)} not set for the Label Studio at {url}: {START}"
    found = LabelStudio(url + "/", *(os.environ[name] for name in names))
    try:
        me = found.api().get("/api/current-user/whoami")
    except (requests.RequestException, AssertionError, ValueError) as error:
        return f"no Label Studio answers at {url} with LABEL_STUDIO_USER_TOKEN ({error}): {START}"
    if me.get("email") != found.username.lower():
        return f"LABEL_STUDIO_USER_TOKEN is {me.get('email')}'s, not {found.username}'s"
    return found


@pytest.fixture(scope="session")
def label_studio() -> LabelStudio:
    found = find_label_studio()
    if isinstance(found, str):
        if os.environ.get("SEJURY_REQUIRE_LABEL_STUDIO") == "1":
            pytest.fail(f"SEJURY_REQUIRE_LABEL_STUDIO=1 but {found}", pytrace=False)
        pytest.skip(found)
    return found
