"""Images, audio and video in the engine: media parts of messages, the vision projector (libmtmd), M-RoPE
positions, and the image pieces decoded in the engine's steps."""
