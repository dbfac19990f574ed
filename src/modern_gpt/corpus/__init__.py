"""Reading text, tokenizers behind one small protocol, and the generated Sanskrit corpus."""
