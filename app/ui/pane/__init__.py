"""A prompt pane and its parts: the header, the conversation, the editor, the settings forms, the grid of panes."""
