// Placeholder until --feature-gates lands (the codec work brings the real gate set with the
// same `features.enabled(name)` API): every alpha gate off, as kube-apiserver 1.33 defaults.
export const features = {
  enabled(_name: string): boolean {
    return false;
  },
};
