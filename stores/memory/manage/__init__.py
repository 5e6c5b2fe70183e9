"""What happens to memories after they are written: edits (`edit`), restore (`restore`), undo
(`undo`) and the maintenance journal (`journal`)."""
