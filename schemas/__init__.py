"""Wire format (marshmallow 4): what clients send and receive. Imports nothing of ours."""
