"""memory.md: the format (`format`) and importing it (`importer`)."""
