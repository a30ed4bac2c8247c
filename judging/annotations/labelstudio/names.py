"""The names export writes and import reads: the labelling config's tags (the results of
the annotations refer to them) and our ids in a task's data."""

# The names the config gives its tags: the results of the annotations refer to them.
CHOICES_NAME = "label"
NOTE_NAME = "note"
DIFF_NAME = "diff"
# Our ids in a task's data.
DATASET_FIELD = "sejury_dataset"
# The patch's id, not its key: keys can name the repair tool, and Label Studio shows task
# data to its annotators.
PATCH_FIELD = "sejury_patch_id"
CAMPAIGN_FIELD = "sejury_campaign"
