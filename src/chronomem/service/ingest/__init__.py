"""Importing the transcripts people already have: format readers
(:mod:`.formats`) stream :class:`~.source.SourceMessage` records; the import
run (:mod:`.run`) stores each as an episode once, incrementally."""
