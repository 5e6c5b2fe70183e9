"""The dialog suites: the suite format (`suite`), replaying dialogs through the graph (`runner`),
the metrics and their scoring (`metrics`, `scoring`), and the evidence behind each figure
(`evidence`)."""
