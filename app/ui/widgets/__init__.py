"""Small widgets more than one feature uses: elided labels, collapsible sections, escaped lists, frames, tints."""
