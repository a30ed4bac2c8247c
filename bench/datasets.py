"""The synthetic datasets the judging benchmarks share: bugs of one-line changes, each patch
a change of its own. Import it after ``django.setup()``."""

import hashlib

from rubrics.models import Bug, Dataset, Patch


def diff(path: str, line: int, old: str, new: str) -> str:
    return (
        f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -{line},3 +{line},3 @@\n"
        f" def f{line}(x):\n-    return {old}\n+    return {new}\n     # end\n"
    )


def synthetic_dataset(
    name: str, patches: int, *, per_bug: int, key_prefix: str = "BENCH", nonce: str = ""
) -> Dataset:
    """A dataset ``name`` of ``patches`` patches, ``per_bug`` to a bug. A ``nonce`` in the
    bugs' titles keeps every prompt new, even in a persistent database whose LLMCall cache
    holds an earlier invocation's answers."""
    dataset = Dataset.objects.create(name=name, slug=name)
    suffix = f" ({nonce})" if nonce else ""
    bugs = Bug.objects.bulk_create(
        (
            Bug(
                dataset=dataset,
                key=f"{key_prefix}-{b}",
                title=f"Bug {b} in module m{b % 37}{suffix}",
                description="f returns the wrong value for negative inputs. " * 3,
                language="python",
                reference_patch=diff(f"src/m{b}.py", b + 1, "x + 1", "x - 1"),
            )
            for b in range(-(-patches // per_bug))
        ),
        batch_size=500,
    )
    rows = []
    for n in range(patches):
        bug = bugs[n // per_bug]
        text = diff(f"src/m{bug.key}.py", n + 1, "x + 1", f"x - {n + 1}")
        rows.append(
            Patch(
                dataset=dataset,
                bug=bug,
                key=f"{bug.key}-p{n % per_bug}",
                diff=text,
                diff_hash=hashlib.sha256(text.encode()).hexdigest(),
            )
        )
    Patch.objects.bulk_create(rows, batch_size=500)
    return dataset
