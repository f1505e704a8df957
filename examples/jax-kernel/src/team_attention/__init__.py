"""team_attention: a blocked (flash-style) attention in Pallas, the team's own kernel."""
__version__ = "0.1.0"
