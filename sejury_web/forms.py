from django import forms
from django.contrib.auth.forms import UserCreationForm

from .roles import Role


class RolesForm(forms.Form):
    roles = forms.MultipleChoiceField(
        choices=Role.choices, widget=forms.CheckboxSelectMultiple, required=False
    )


class UserCreateForm(UserCreationForm):
    roles = forms.MultipleChoiceField(
        choices=Role.choices, widget=forms.CheckboxSelectMultiple, required=True
    )

    class Meta(UserCreationForm.Meta):
        fields = ("username", "email")
