{{/* The name of the release's objects: the release name (tiler in deploy/tiler.yaml). */}}
{{- define "tiler.fullname" -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The labels of the Deployment's pods, which the Deployment and the Service select. */}}
{{- define "tiler.selectorLabels" -}}
app.kubernetes.io/name: tiler
{{- end -}}
