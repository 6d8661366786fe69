"""The H200 campaign: every shape-only timing run that fills a paper cell, in resumable time-boxed chunks.

``plan`` lists the runs (Hydra override lists with replayed tau per task and its source), ``execute`` runs them
under a time budget into ``results/<gpu>/<date>/`` and keeps a ledger so a cut-off chunk resumes where it stopped.
"""
