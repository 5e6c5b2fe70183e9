"""Messages as prompt text: token counting (`tokens`), transcripts (`transcript`), recalled
text escaped as data (`escape`) and messages redacted before a summarizer reads them
(`redaction`)."""
