from django import forms

from api.tokens import NAME_MAX


class TokenForm(forms.Form):
    name = forms.CharField(
        max_length=NAME_MAX,
        required=False,
        label="Name",
        help_text="What uses it, e.g. “nightly pipeline”.",
    )
