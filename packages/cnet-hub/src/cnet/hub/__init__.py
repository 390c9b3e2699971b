"""cnet-hub: push checkpoint folders, with a generated model card, to the Hugging Face Hub and pull them back.

``cnet.hub.push(folder, repo_id)`` / ``cnet push FOLDER REPO_ID``; ``cnet.hub.pull(repo_id)`` /
``cnet pull REPO_ID`` (DESIGN.md section 5). Depends on cnet-core only.
"""

from cnet.hub.card import model_card, read_metrics
from cnet.hub.transfer import pull, push

__all__ = ["push", "pull", "model_card", "read_metrics"]
