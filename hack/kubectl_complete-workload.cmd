@echo off
rem Completion of "kubectl workload" for kubectl's plugin completion (kubectl 1.26 or later).
rem Keep it on PATH next to kubectl-workload.exe.
kubectl-workload.exe __complete %*
