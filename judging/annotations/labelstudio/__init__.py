"""Label Studio both ways: patches out as Label Studio tasks, annotations back in as labels.

- :mod:`.export`: a campaign's (or a dataset's) patches as the tasks Label Studio imports,
  the labelling config that shows them, and optionally a run's verdicts as predictions;
- :mod:`.import_`: Label Studio's JSON export of those tasks read back, each annotation a
  bundle ``label`` record, all or nothing;
- :mod:`.names`: what both sides agree on, the names of the config's tags and of our ids in
  a task's data.
"""
