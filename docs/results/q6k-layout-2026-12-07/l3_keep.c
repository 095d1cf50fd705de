#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>
#include <sys/mman.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
#define BIG (96L<<20)
#define HOT (11L<<20)
char *big,*hot;
int mode; int dist;
typedef struct {long a,b; long long s;} arg_t;
__attribute__((target("avx512f,avx512bw,avx512vnni,clflushopt")))
void* stream(void*p){arg_t*a=p; __m512i acc=_mm512_setzero_si512(); __m512i ones=_mm512_set1_epi8(1);
 for(long i=a->a;i<a->b;i+=64){
  if(mode==1)_mm_prefetch(big+i+dist,_MM_HINT_T1);
  else if(mode==2)_mm_prefetch(big+i+dist,_MM_HINT_NTA);
  else if(mode==3)_mm_prefetch(big+i+dist,_MM_HINT_T0);
  __m512i v=_mm512_load_si512((void*)(big+i));
  acc=_mm512_dpbusd_epi32(acc,v,ones);
  if(mode==4){_mm_prefetch(big+i+dist,_MM_HINT_T1); if(i>=a->a+4096) _mm_clflushopt(big+i-4096);}
 }
 a->s=_mm512_reduce_add_epi32(acc);return 0;}
volatile long long sink; long *perm; long np;
long long touch(){long long s=0; for(long i=0;i<np;i++) s+=hot[perm[i]]; sink=s; return s;}
int main(int c,char**v){mode=atoi(v[1]);dist=atoi(v[2]);
 big=aligned_alloc(2<<20,BIG);hot=aligned_alloc(2<<20,HOT);madvise(big,BIG,MADV_HUGEPAGE);madvise(hot,HOT,MADV_HUGEPAGE);memset(big,1,BIG);memset(hot,2,HOT); np=HOT/64/4; perm=malloc(np*8); for(long i=0;i<np;i++) perm[i]=((i*7919L)%(HOT/64))*64;
 double ts=0,th=0,th0=0,tf=0; int R=30;
 for(int r=0;r<R+3;r++){
  pthread_t t[2];arg_t a[2]={{0,BIG/2},{BIG/2,BIG}};
  double t0=now();for(int k=0;k<2;k++)pthread_create(&t[k],0,stream,&a[k]);for(int k=0;k<2;k++)pthread_join(t[k],0);
  double t1=now(); touch(); double t2=now(); touch(); double t3=now(); for(long i=0;i<HOT;i+=64) _mm_clflush(hot+i); _mm_mfence(); double t4=now(); touch(); double t5=now(); tf+=t5-t4;
  if(r<3) tf=0; if(r>=3){ts+=t1-t0;th+=t2-t1;th0+=t3-t2;}
 }
 printf("mode %d dist %d: stream %.2f GB/s, hot-after %.0f us, hot-warm %.0f us, hot-dram %.0f us\n",mode,dist,BIG/(ts/R)/1e9,th/R*1e6,th0/R*1e6,tf/R*1e6);
}
