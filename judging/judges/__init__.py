"""Judges that leads write: a prompt template over named data blocks and an answer kind, kept
as versions (``WrittenJudge``, ``JudgeVersion``), resolved into a ``Strategy`` by name in a
team (``minimalism`` for the newest trusted version, ``minimalism@3`` for one version).

``template`` (the blocks, checking and rendering a template; pure), ``answers`` (the answer
kinds, each one's JSON schema with its bounds, and the score an answer gives; pure),
``strategy`` (a version as a ``Strategy``), ``offline`` (what the offline model answers),
``selectors`` (a version by name, its export), ``services`` (defining a judge or a version,
a version's status).
"""
