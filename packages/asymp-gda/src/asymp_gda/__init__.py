"""AsymP-GDA."""
