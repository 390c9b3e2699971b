"""cnet-models: registered architectures of the papers, and the training app.

``create(name, **overrides)``, ``list_models()``, ``save(model, folder)`` and ``load(folder)``; models return
:class:`LMOutput`; :func:`cnet.models.train.train` is the training loop behind ``cnet train``.
"""

from cnet.models.base import LanguageModel, count_parameters
from cnet.models.output import LMOutput
from cnet.models.registry import create, list_models, load, model_name, save
from cnet.models.shortcut import match

__all__ = ["create", "list_models", "save", "load", "model_name", "match", "LMOutput", "LanguageModel",
           "count_parameters"]
