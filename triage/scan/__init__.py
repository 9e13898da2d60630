"""Which lines of a text many regexes may match, in one pass: Hyperscan where installed, Python otherwise."""
