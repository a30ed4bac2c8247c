import factory
from django.contrib.auth.models import User
from factory.django import DjangoModelFactory

from judging.models import Annotation, Label
from tests.rubrics.factories import PatchFactory


class UserFactory(DjangoModelFactory):  # type: ignore[misc]
    class Meta:
        model = User
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")


class AnnotationFactory(DjangoModelFactory):  # type: ignore[misc]
    class Meta:
        model = Annotation

    patch = factory.SubFactory(PatchFactory)
    annotator = factory.SubFactory(UserFactory)
    label = Label.VALID
    origin = Annotation.Origin.UI
