from django import forms

from api.tokens import NAME_MAX


class TokenForm(forms.Form):
    name = forms.CharField(
        max_length=NAME_MAX,
        label="Name",
        help_text="What uses it, e.g. “nightly pipeline”: the list tells your tokens apart "
        "by it when you revoke one.",
        error_messages={"required": "Name the token: say what will use it."},
    )
