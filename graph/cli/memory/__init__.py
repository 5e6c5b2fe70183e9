"""`engram memory`: the shared options and error handling (`options`), the back end and the
tables (`support`), and the commands (`read`, `edit`, `transfer`, `maintain`), which
`engram.graph.cli.commands` registers."""
